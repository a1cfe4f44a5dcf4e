import { MemoryStore } from '@sluice/core';
import { describeStoreBehaviour } from '../suites/store-behaviour.js';

describeStoreBehaviour('MemoryStore', () => new MemoryStore());
