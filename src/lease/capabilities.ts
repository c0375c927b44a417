/**
 * The closed vocabulary of what a child may do. No wildcards: a capability not named here
 * does not exist, and a policy naming one fails to load. Plain data (no zod): the CLI's thin
 * path names them too.
 */
export const CAPABILITIES = [
  'spawn', // start grandchildren through the broker
  'refs.read', // slice its own descendants' ResultRefs
  'llm', // call a model through the broker (keys stay in the supervisor)
  'steer', // steer its own children
  'kill', // kill its own children
  'artifacts.read', // see artifacts its parent handed it
  'exec', // run processes inside its own jail
  'net.egress', // reserved: no shipped policy grants it and the jail never has a network
] as const;
