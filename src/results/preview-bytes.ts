/**
 * How much a preview holds: a ResultRef's head (at most this many bytes, cut at a UTF-8
 * boundary: kind.ts previewOf) and the CLI's stdout preview. Defined once, here, in a file that
 * imports nothing, so the thin library entry (src/light.ts) can hand it to the CLI without
 * loading zod; results/types.ts re-exports it for everything else.
 */
export const PREVIEW_BYTES = 2048;
