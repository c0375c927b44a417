/** console/: the operator console — one page served beside the daemon's own API handler on loopback. */
export { consoleAddress, listenConsole } from './console.js';
