/**
 * The server's `window/showMessage` notifications, held back while an answer the panel will show
 * is on its way: the server tells any client why an answer written into a note was refused, but
 * VS Code shows that refusal in the panel (with the nearest passages), so its toast is dropped.
 * Warnings and errors are never held.
 */

export const INFO = 3; // LSP MessageType.Info (1 error, 2 warning, 3 info, 4 log)

export interface Message {
  type: number;
  message: string;
}

export class HeldMessages {
  private holds = 0;
  private held: Message[] = [];

  constructor(private readonly show: (m: Message) => void) {}

  /** A server message: shown now, or kept until the answers being waited on arrive. */
  received(m: Message): void {
    if (this.holds > 0 && m.type >= INFO) {
      this.held.push(m);
    } else {
      this.show(m);
    }
  }

  /**
   * Hold info messages while `work` runs. `shown(result)` says whether the result was shown to
   * the person another way (then what was held is dropped); once nothing is held any more, the
   * rest is shown in order.
   */
  async while<T>(work: () => Promise<T>, shown: (result: T) => boolean): Promise<T> {
    this.holds += 1;
    let drop = false;
    try {
      const result = await work();
      drop = shown(result);
      return result;
    } finally {
      this.holds -= 1;
      if (drop) {
        this.held = [];
      }
      if (this.holds === 0) {
        const held = this.held;
        this.held = [];
        held.forEach((m) => this.show(m));
      }
    }
  }
}
