/**
 * Vitest reporter that ends the run with one plain line, `Summary: N passed, N failed, N skipped`,
 * which CI log readers understand regardless of the runner. Used next to the default reporter.
 * Before it, the run's status coverage (status-coverage.ts): a status the API answered on a route whose OpenAPI
 * entry does not declare it is listed, counted as one failure, and fails the run.
 */
import type { Reporter, TestModule } from 'vitest/node';
import { checkStatusCoverage } from './status-coverage.ts';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed++;
    }
    const coverage = checkStatusCoverage();
    if (coverage.undeclared.length > 0) {
      failed++;
      process.exitCode = 1;
      process.stdout.write(
        `\nFAIL status coverage: the API answered ${coverage.undeclared.length} status(es) its OpenAPI document does not declare ` +
          `for the route (declare them in the route schema: service/http/schemas.ts errorResponses):\n` +
          coverage.undeclared.map((u) => `  ${u.method} ${u.route} → ${u.status}\n`).join(''),
      );
    } else if (coverage.observed > 0) {
      process.stdout.write(`\nStatus coverage: ${coverage.observed} (method, route, status) answered, each declared in the OpenAPI document\n`);
    }
    process.stdout.write(`\nSummary: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
