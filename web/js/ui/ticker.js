// One timer for every live counter on the page (cell clocks): it runs only while something
// counts, and a hidden tab does not repaint.

const INTERVAL_MS = 200;
const jobs = new Set();
let timer = null;

function run() {
  if (document.hidden) return;
  for (const job of jobs) job();
}

// Calls fn now and every INTERVAL_MS until the returned function is called.
export function every(fn) {
  jobs.add(fn);
  fn();
  if (!timer) timer = setInterval(run, INTERVAL_MS);
  return () => {
    jobs.delete(fn);
    if (jobs.size === 0 && timer) { clearInterval(timer); timer = null; }
  };
}
