import { readFile } from 'node:fs/promises';

export interface ProcessMemory {
  /** Resident set size now (VmRSS), in bytes. */
  rssBytes: number;
  /** The highest resident set size the process has had (VmHWM), in bytes. */
  peakRssBytes: number;
}

/** Reads a live process's memory from `/proc/<pid>/status` (Linux). */
export async function readProcessMemory(pid: number): Promise<ProcessMemory> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
    if (!match) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(match[1]) * 1024;
  };
  return { rssBytes: kib('VmRSS'), peakRssBytes: kib('VmHWM') };
}
