/**
 * Runs before each test file (`setupFiles`). The test processes run file after file without a
 * fresh module graph (`isolate: false` in vitest.config.ts: a process and its imports per file
 * were most of the suite's CPU), so what a new process would start without is cleared here: the
 * configuration warnings sluice gives once per process. The files restore their own fake timers,
 * stubs and process listeners.
 */
import { forgetWarnings } from './process-warnings.js';

forgetWarnings();
