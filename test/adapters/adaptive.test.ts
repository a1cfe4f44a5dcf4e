import { adaptiveSuite } from './adaptive-suite.js';
import { subjects } from './subjects.js';

// The adaptive concurrency guard's suite on every adapter (it takes no store: its state is in process).
for (const subject of subjects) adaptiveSuite(subject);
