import { describeRuntime } from './suite.js';

describeRuntime('workerd');
