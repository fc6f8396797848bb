// The page's configuration in the URL hash: "#" + one format character + the payload.
// Format "d": the link text of src/link/config_link.h ("v1;model=...;end"), UTF-8, deflate-raw (fflate),
// base64url without padding. A later format takes another first character, so old links stay readable.
// Decoding is strict and bounded: every failure is an Error whose message starts with "link: " and says
// what was wrong; neither the hash nor the inflated text may exceed MAX_LINK_CHARS (the text's own limit,
// kMaxLinkBytes, is checked again by the wasm core).
import { deflateSync, Inflate } from './vendor/fflate.js';

export const LINK_FORMAT = 'd';
export const MAX_LINK_CHARS = 65536;

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function toBase64url(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let k = 0; k < chars; k++) s += B64[(n >> (18 - 6 * k)) & 63];
  }
  return s;
}

function fromBase64url(text) {
  if (text.length % 4 === 1) throw new Error(`link: ${text.length} base64url characters cannot hold whole bytes (the link was cut)`);
  const out = new Uint8Array(Math.floor((text.length * 6) / 8));
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    const v = B64.indexOf(text[i]);
    if (v < 0) throw new Error(`link: character "${text[i]}" at position ${i + 2} is not base64url (A-Z a-z 0-9 - _)`);
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 255;
    }
  }
  return out;
}

// The hash (without "#") for a link text.
export function encodeLink(text) {
  return LINK_FORMAT + toBase64url(deflateSync(new TextEncoder().encode(text), { level: 9 }));
}

// The link text of a hash (without "#"); throws Error("link: ...").
export function decodeLink(hash) {
  if (hash.length > MAX_LINK_CHARS) throw new Error(`link: the hash is ${hash.length} characters, at most ${MAX_LINK_CHARS} are read`);
  const format = hash[0] ?? '';
  if (format !== LINK_FORMAT) {
    throw new Error(`link: unknown format "${format}" (its first character); this page reads links starting with "${LINK_FORMAT}"` +
                    ' (and the older #model=...&system=...&parallel=... form)');
  }
  const bytes = fromBase64url(hash.slice(1));
  // Inflated in small input steps so a deflate bomb stops at the limit instead of filling memory.
  const chunks = [];
  let total = 0;
  let done = false;
  const inflate = new Inflate((chunk, final) => {
    total += chunk.length;
    if (total > MAX_LINK_CHARS) throw new Error(`link: inflates to more than ${MAX_LINK_CHARS} bytes`);
    chunks.push(chunk);
    done = final;
  });
  try {
    for (let i = 0; i < bytes.length || i === 0; i += 256) inflate.push(bytes.subarray(i, i + 256), i + 256 >= bytes.length);
  } catch (e) {
    if (e.message.startsWith('link: ')) throw e;
    throw new Error(`link: not valid compressed data (${e.message}); the link was damaged or cut`);
  }
  if (!done) throw new Error('link: the compressed data ends early; the link was cut');
  const all = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) all.set(c, o), (o += c.length);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all);
  } catch {
    throw new Error('link: the inflated link is not UTF-8 text');
  }
}
