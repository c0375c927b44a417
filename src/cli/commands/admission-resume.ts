import { admissionChangeCommand } from './admission-shared.js';

export default admissionChangeCommand('resume');
