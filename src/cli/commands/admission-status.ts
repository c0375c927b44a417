import { statusCommand } from './admission-shared.js';

export default statusCommand;
