/**
 * An OpenAI-compatible chat server on 127.0.0.1 that streams scripted pieces over SSE, `delay` ms
 * apart, the way a real model server does: what the tests point `llm.endpoint` at.
 */
import * as http from "node:http";

export interface ModelRequest {
  headers: http.IncomingHttpHeaders;
  body: { model?: string; messages?: { role: string; content: string }[] };
}

/** The pieces to stream for a request (by default the scripted ones). */
export type Reply = (request: ModelRequest) => string[];

export class ScriptedModel {
  pieces: string[] = ["The answer [#1]."];
  delay = 0;
  reply: Reply = () => this.pieces;
  requests: ModelRequest[] = [];

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<ScriptedModel> {
    let model: ScriptedModel | undefined;
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => { body += d; });
      req.on("end", async () => {
        const m = model!;
        const request = { headers: req.headers, body: JSON.parse(body || "{}") };
        m.requests.push(request);
        res.writeHead(200, { "Content-Type": "text/event-stream" });
        for (const piece of m.reply(request)) {
          if (res.destroyed) {
            return;
          }
          res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: piece } }] })}\n\n`);
          await new Promise((r) => setTimeout(r, m.delay));
        }
        // as OpenAI-compatible servers end an answer: a last chunk saying why, then [DONE]
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
        res.end("data: [DONE]\n\n");
      });
    });
    model = new ScriptedModel(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return model;
  }

  get endpoint(): string {
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  }

  script(pieces: string[], delay: number): void {
    this.pieces = pieces;
    this.delay = delay;
    this.requests = [];
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** The marker of the first evidence passage in the prompt whose text matches `pattern`. */
export function markerFor(request: ModelRequest, pattern: RegExp): number | undefined {
  const prompt = (request.body.messages ?? []).map((m) => m.content).join("\n");
  const parts = prompt.split(/\[#(\d+)\]/);
  for (let i = 1; i + 1 < parts.length; i += 2) {
    if (pattern.test(parts[i + 1])) {
      return Number(parts[i]);
    }
  }
  return undefined;
}
