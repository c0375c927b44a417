// Module hooks (node:module register): every resolved URL is appended to the file given.
import fs from 'node:fs';

let file;
export function initialize(data) {
  file = data.file;
}
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(file, `${r.url}\n`);
  return r;
}
