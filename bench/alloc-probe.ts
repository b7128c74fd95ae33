// Loaded with `--import` into a server process the gateways benchmark starts (tollgate, Portkey,
// the bare forwarder) with an IPC channel: answers how many bytes of JavaScript heap the process
// allocated between an 'alloc:start' and an 'alloc:stop' message, and how much CPU it used.
// Allocation is counted from garbage collections (v8.GCProfiler): the heap in use before each
// collection minus the heap in use after the one before it, plus the growth since the last one.
// So it counts every object the process made, whatever became of it; memory outside the V8 heap
// (Buffer and ArrayBuffer contents, sockets' native memory) is not counted.
import { GCProfiler, getHeapStatistics } from 'node:v8';

let profiler: GCProfiler | undefined;
let startUsed = 0;
let startCpu: NodeJS.CpuUsage | undefined;

process.on('message', (message: unknown) => {
  if (message === 'alloc:start') {
    profiler = new GCProfiler();
    startCpu = process.cpuUsage();
    startUsed = getHeapStatistics().used_heap_size;
    profiler.start();
    process.send?.({ alloc: 'started' });
  } else if (message === 'alloc:stop' && profiler) {
    const endUsed = getHeapStatistics().used_heap_size;
    const cpu = process.cpuUsage(startCpu);
    const data = profiler.stop();
    profiler = undefined;
    let previous = startUsed;
    let bytes = 0;
    let gcMs = 0;
    for (const gc of data?.statistics ?? []) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - previous;
      previous = gc.afterGC.heapStatistics.usedHeapSize;
      gcMs += gc.cost / 1000;
    }
    bytes += endUsed - previous;
    process.send?.({ alloc: 'stopped', bytes, gcMs, cpuMs: (cpu.user + cpu.system) / 1000 });
  }
});
// The channel must not keep a process alive that would otherwise exit.
process.channel?.unref();
