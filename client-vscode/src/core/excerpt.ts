/**
 * A passage of a note as a person reads it, for a search or related hit's detail in the picker
 * (the nearest passages under a refusal come with the server's own `excerpt`): the note's
 * Markdown source without what only the source shows (HTML comments and tags, code fence lines,
 * table pipes and separator rows, the headings it starts with, which its link already names,
 * heading hashes, list and quote markers, link targets, wiki link brackets, code and emphasis
 * marks), on one line, cut at a word.
 */

/** Plain readable text of a Markdown passage, at most `max` characters (then `…`). */
export function excerpt(markdown: string, max = 240): string {
  const text = markdown.replace(/\r\n?/g, "\n")
    .replace(/<!--[\s\S]*?(?:-->|$)/g, " ") // comments, an unclosed one to the end
    .split("\n").filter((l, i, all) => !(HEADING.test(l) && all.slice(0, i).every((x) => !x.trim() || HEADING.test(x))))
    .map(line).filter((l) => l !== "").join(" ")
    .replace(/\s+/g, " ").trim();
  return cut(text, max);
}

const HEADING = /^\s*#{1,6}\s/; // leading ones are left out: the passage's link names them
const FENCE = /^\s*(?:`{3,}|~{3,})/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$/;

function line(raw: string): string {
  if (FENCE.test(raw) || TABLE_SEPARATOR.test(raw)) {
    return "";
  }
  let s = raw
    .replace(/^\s*(?:>\s?)+/, "") // quote markers
    .replace(/^\s*\[![\w-]+\][+-]?\s*/, "") // a callout's [!note]
    .replace(/^\s*#{1,6}\s+/, "") // heading hashes
    .replace(/^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?/, "") // list markers, task boxes
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // [text](target) → text
    .replace(WIKILINK, (m) => wikiText(m)) // [[target|alias]] → alias, [[#Heading]] → Heading
    .replace(/\[\^[^\]\s]+\]/g, "") // footnote references
    .replace(/<\/?[A-Za-z][^>]*>/g, " ") // HTML tags
    .replace(/`+|\*\*|__|~~/g, "") // code and strong marks
    .replace(/(?<![\w*])\*(\S(?:[^*]*\S)?)\*(?![\w*])/g, "$1") // *italics*
    .replace(/(?<!\w)_(\S(?:[^_]*\S)?)_(?!\w)/g, "$1"); // _italics_
  if (/^\s*\|.*\|\s*$/.test(s) || (s.match(/\|/g)?.length ?? 0) >= 2) {
    s = s.replace(/^\s*\|/, "").replace(/\|\s*$/, "").split("|").map((c) => c.trim()).filter(Boolean).join(" · ");
  }
  return s.trim();
}

/** An Obsidian wiki link: `[[note]]`, `[[note#Heading]]`, `[[#Heading]]`, `[[note|alias]]`. */
export const WIKILINK = /!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]/g;

/** A wiki link as it reads: its alias, else the note and heading it names (`note › Heading`). */
export function wikiText(link: string): string {
  const m = /^!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]$/.exec(link);
  if (!m) {
    return link;
  }
  const [, note, heading, alias] = m;
  return (alias ?? [note, heading].filter((x) => x && x.trim()).join(" › ")).trim();
}

function cut(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  const head = text.slice(0, max);
  const space = head.lastIndexOf(" ");
  return `${(space > max * 0.6 ? head.slice(0, space) : head).trimEnd()}…`;
}
