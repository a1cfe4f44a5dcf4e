import { MemoryStore } from '@sluice/core';
import { subjects } from './subjects.js';
import { adapterSuite } from './suite.js';

// The behaviour suite on the memory store with a fake clock; the Redis run passes its own factory.
for (const subject of subjects) adapterSuite(subject, (clock) => new MemoryStore({ clock }));
