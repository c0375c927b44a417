import { decisionCommand } from './graph-shared.js';

export default decisionCommand('approve');
