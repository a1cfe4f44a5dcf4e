import { describeRuntime } from './suite.js';

describeRuntime('deno');
