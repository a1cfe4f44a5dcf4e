import { describeRuntime } from './suite.js';

describeRuntime('bun');
