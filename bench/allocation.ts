// Heap allocated and CPU used by this process between a start and a stop, for ./alloc-probe.ts
// and ./express-prototypes-main.ts. Allocation is counted from garbage collections
// (v8.GCProfiler): the heap in use before each collection minus the heap in use after the one
// before it, plus the growth since the last one. So it counts every object the process made,
// whatever became of it; memory outside the V8 heap (Buffer and ArrayBuffer contents, sockets'
// native memory) is not counted.
import { GCProfiler, getHeapStatistics } from 'node:v8';

export interface Allocation {
  bytes: number;
  gcMs: number;
  cpuMs: number;
}

/** Starts counting; the function returned stops and answers. */
export function countAllocation(): () => Allocation {
  const profiler = new GCProfiler();
  const startCpu = process.cpuUsage();
  const startUsed = getHeapStatistics().used_heap_size;
  profiler.start();
  return () => {
    const endUsed = getHeapStatistics().used_heap_size;
    const cpu = process.cpuUsage(startCpu);
    const data = profiler.stop();
    let previous = startUsed;
    let bytes = 0;
    let gcMs = 0;
    for (const gc of data?.statistics ?? []) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - previous;
      previous = gc.afterGC.heapStatistics.usedHeapSize;
      gcMs += gc.cost / 1000;
    }
    bytes += endUsed - previous;
    return { bytes, gcMs, cpuMs: (cpu.user + cpu.system) / 1000 };
  };
}
