import { type FSWatcher, readdirSync, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import { SluiceError } from '@sluice/core';
import { buildConfig, type RlsConfig } from './config.js';
import { configError, readConfigFile } from './config-file.js';

/** The files a directory's config is read from: `*.yaml` and `*.yml`, dotfiles left out, in name order. */
function configFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.startsWith('.') && /\.ya?ml$/.test(e.name))
    .map((e) => e.name)
    .sort();
}

/** Reads and builds a directory's config; throws a SluiceError naming the file and line. */
export function loadConfigDirectory(dir: string): RlsConfig {
  let names: string[];
  try {
    names = configFiles(dir);
  } catch (err) {
    throw configError(dir, undefined, `cannot read the config directory: ${(err as Error).message}`);
  }
  const roots = names.map((name) => {
    const file = join(dir, name);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw configError(file, undefined, `cannot read: ${(err as Error).message}`);
    }
    return readConfigFile(file, text);
  });
  return buildConfig(roots);
}

/**
 * A directory of config files, reloaded when a file in it changes: the new config replaces the
 * old whole, between two requests (a request holds the config it started with). A config that
 * fails to load is refused: the error is reported with its file and line, and the last good
 * config keeps serving.
 */
export class ConfigDirectory {
  private current: RlsConfig;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    private readonly report: (
      event: 'config-reloaded' | 'config-refused',
      fields: Record<string, unknown>,
    ) => void,
  ) {
    this.current = loadConfigDirectory(dir);
  }

  get config(): RlsConfig {
    return this.current;
  }

  /** Loads the directory again; true when the new config now serves. */
  reload(): boolean {
    try {
      this.current = loadConfigDirectory(this.dir);
      this.report('config-reloaded', {
        dir: this.dir,
        files: this.current.files.length,
        domains: this.current.domains.size,
      });
      return true;
    } catch (err) {
      const message = err instanceof SluiceError ? err.message : String(err);
      this.report('config-refused', { dir: this.dir, error: message });
      return false;
    }
  }

  /**
   * Reloads on every change in the directory, once the directory has been quiet for `quietMs` (an
   * editor writes a file in several steps; a deploy swaps several files).
   */
  watch(quietMs: number): void {
    if (this.watcher !== undefined) return;
    this.watcher = watch(this.dir, () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.reload(), quietMs);
      this.timer.unref();
    });
    this.watcher.on('error', (err) => this.report('config-refused', { dir: this.dir, error: err.message }));
    this.watcher.unref();
  }

  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
  }
}
