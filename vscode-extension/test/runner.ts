// Runs mocha inside VS Code's extension host (VS Code calls the suite's run()) and writes each test's
// outcome to the JSON file named by FUSELENS_TEST_RESULTS, which the pytest side reads.
import { writeFileSync } from 'fs';
import Mocha from 'mocha';

interface TestResult {
  title: string;
  state: 'passed' | 'failed' | 'pending';
  durationMs: number;
  error?: string;
}

export function runSuite(files: string[]): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', timeout: 120_000, color: false, reporter: 'spec' });
  files.forEach((file) => mocha.addFile(file));
  const results: TestResult[] = [];
  const output = process.env.FUSELENS_TEST_RESULTS;
  const save = () => output && writeFileSync(output, JSON.stringify({ tests: results }, null, 2));
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      save();
      if (failures) {
        reject(new Error(`${failures} extension test(s) failed`));
      } else {
        resolve();
      }
    });
    runner.on('pass', (test) => results.push({ title: test.title, state: 'passed', durationMs: test.duration ?? 0 }));
    runner.on('fail', (test, error) => {
      results.push({ title: test.title, state: 'failed', durationMs: test.duration ?? 0, error: String(error?.stack ?? error) });
      save();
    });
    runner.on('pending', (test) => results.push({ title: test.title, state: 'pending', durationMs: 0 }));
  });
}
