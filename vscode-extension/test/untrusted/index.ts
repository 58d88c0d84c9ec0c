// extensionTestsPath entry of the untrusted-workspace run.
import * as path from 'path';
import { runSuite } from '../runner';

export function run(): Promise<void> {
  return runSuite([path.join(__dirname, 'restricted.test.js')]);
}
