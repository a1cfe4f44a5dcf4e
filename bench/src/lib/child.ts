import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs `bench/src/<file>` in a fresh Node process (through tsx) and parses the JSON it prints last. */
export function runChild<T>(
  file: string,
  args: readonly string[],
  nodeFlags: readonly string[] = [],
  timeoutMs = 300_000,
): Promise<T> {
  const path = fileURLToPath(new URL(`../${file}`, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', path, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        reject(new Error(`${file} ${args.join(' ')} exited with ${code ?? signal}`));
        return;
      }
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${file} ${args.join(' ')} printed no JSON result: ${out.slice(-500)}`));
      }
    });
  });
}
