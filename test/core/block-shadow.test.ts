import { MemoryStore } from '@sluice/core';
import { describeBlockAndShadow } from '../suites/block-shadow.js';

describeBlockAndShadow('MemoryStore', () => new MemoryStore());
