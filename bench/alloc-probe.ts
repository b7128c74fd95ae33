// Loaded with `--import` into a server process the gateways benchmark starts (tollgate, Portkey,
// the bare forwarder) with an IPC channel: answers how many bytes of JavaScript heap the process
// allocated between an 'alloc:start' and an 'alloc:stop' message, and how much CPU it used
// (counted as ./allocation.ts says).
import { type Allocation, countAllocation } from './allocation.js';

let stop: (() => Allocation) | undefined;

process.on('message', (message: unknown) => {
  if (message === 'alloc:start') {
    stop = countAllocation();
    process.send?.({ alloc: 'started' });
  } else if (message === 'alloc:stop' && stop) {
    const counted = stop();
    stop = undefined;
    process.send?.({ alloc: 'stopped', ...counted });
  }
});
// The channel must not keep a process alive that would otherwise exit.
process.channel?.unref();
