import type { JailSpec } from '../../../src/jail/index.js';

/** The spec whose rendered create body is pinned in test/fixtures/jail/create-body.golden.json. */
export const GOLDEN_SPEC: JailSpec = {
  runId: 'r-golden',
  leaseId: 'l-golden',
  rootRunId: 'r-root',
  argv: ['node', '/opt/brig/child/runtime.js'],
  env: { HOME: '/workspace', BRIG_RUN_ID: 'r-golden' },
  limits: { memoryMb: 512, cpu: 1.5, pids: 128, tmpfsMb: 64, diskMb: 64 },
  artifacts: [{ hostPath: '/srv/data/in.jsonl', name: 'in.jsonl' }],
  brokerDir: '/var/lib/brig/brokers/r-golden',
};
export const GOLDEN_IMAGE = 'brig-child:0123456789abcdef';
export const GOLDEN_OWNER = 'h-0123456789ab';
