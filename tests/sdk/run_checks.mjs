// Runs SDK checks in order: each an async function returning what it showed; prints
// "ok" or "FAIL" per check and exits 1 if any failed.
export async function runChecks(checks) {
  let failed = false;
  for (const check of checks) {
    try {
      console.log(`ok   ${await check()}`);
    } catch (e) {
      failed = true;
      console.log(`FAIL ${check.name}: ${e.stack ?? e}`);
    }
  }
  process.exit(failed ? 1 : 0);
}
