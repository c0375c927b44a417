/** daemon/: the composition root and `brig serve`. */
export { composeSupervisor, type ComposeOptions, type Composed } from './compose.js';
export { startDaemon, type Daemon } from './serve.js';
export { createBrig, type Brig, type BrigOptions } from './create-brig.js';
export { openOperator, type Operator, type LeaseView, type PolicyCheck } from './operator.js';
export { explainRun, leaseDecisions, type Explanation } from './explain.js';
