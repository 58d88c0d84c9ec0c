// extensionTestsPath entry of the trusted-workspace run.
import * as path from 'path';
import { runSuite } from '../runner';

export function run(): Promise<void> {
  return runSuite(['editing.test.js', 'environment.test.js', 'running.test.js'].map((file) => path.join(__dirname, file)));
}
