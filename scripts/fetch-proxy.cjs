/**
 * dist/child/fetch-proxy.cjs (copied by `make build`, scripts/bundle-cli.mjs): preloaded by
 * NODE_OPTIONS into every node a child with egress starts, it makes fetch() go through the
 * jail's relay (HTTP(S)_PROXY, NO_PROXY) like curl, Python and git — Node before 24 ignores
 * those variables for fetch. The global dispatcher fetch() reads is a getter until first asked:
 * only then is undici (dist/child/undici.cjs, bundled) loaded and its EnvHttpProxyAgent set, so
 * a node that never fetches pays nothing. Never throws: a node it does not suit (too old, no
 * fetch) runs as without it, and a fetch that ignores the proxy still fails closed (the jail
 * has no network).
 */
'use strict';
try {
  const major = Number(process.versions.node.split('.')[0]);
  const key = Symbol.for('undici.globalDispatcher.1');
  if (major >= 20 && typeof globalThis.fetch === 'function' && (process.env.HTTPS_PROXY || process.env.HTTP_PROXY) && !Object.getOwnPropertyDescriptor(globalThis, key)) {
    let loading = false;
    Object.defineProperty(globalThis, key, {
      configurable: true,
      enumerable: false,
      get() {
        // undici's own start asks for the dispatcher too: undefined then, and it sets its default.
        if (loading) return undefined;
        loading = true;
        try {
          const { EnvHttpProxyAgent, setGlobalDispatcher } = require('./undici.cjs');
          // proxyTunnel false: an http:// URL goes as an absolute-form request (the gate decides each), https:// through CONNECT.
          setGlobalDispatcher(new EnvHttpProxyAgent({ proxyTunnel: false }));
        } catch {
          delete globalThis[key];
          return undefined;
        }
        return globalThis[key];
      },
      set(v) {
        Object.defineProperty(globalThis, key, { value: v, writable: true, enumerable: false, configurable: false });
      },
    });
  }
} catch {
  // fetch() stays as it was: without the proxy it cannot reach anything.
}
