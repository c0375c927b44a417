/**
 * A secret value (a model API key) that does not print: JSON, String(), template literals and
 * util.inspect all show `[redacted]`; only reveal() gives the value, and only the model clients
 * call it. A BrigConfig can be logged without leaking the keys it carries.
 */
const INSPECT = Symbol.for('nodejs.util.inspect.custom');

export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }

  toString(): string {
    return '[redacted]';
  }

  [INSPECT](): string {
    return 'Secret([redacted])';
  }
}
