// Time charts with uPlot: x is Unix seconds (shown in local time), one or two y scales.
import uPlot from "uplot";

export interface SeriesSpec {
  label: string;
  color: string;
  scale?: "y" | "ms"; // "ms": a second axis on the right for run times
  fill?: boolean;
}

export interface ChartOptions {
  height?: number;
  series: SeriesSpec[];
}

export interface Chart {
  setData(data: uPlot.AlignedData): void;
  destroy(): void;
}

function widthOf(container: HTMLElement): number {
  return Math.max(280, Math.floor(container.clientWidth || container.getBoundingClientRect().width || 600));
}

function countFormat(_u: uPlot, splits: number[]): string[] {
  return splits.map((v) => (Math.abs(v) >= 1000 ? `${Math.round(v / 100) / 10}k` : String(Math.round(v * 10) / 10)));
}

export function timeChart(container: HTMLElement, options: ChartOptions, data: uPlot.AlignedData): Chart {
  const hasMs = options.series.some((s) => s.scale === "ms");
  const axes: uPlot.Axis[] = [{ stroke: "#555", grid: { stroke: "#eee" } }, { stroke: "#555", grid: { stroke: "#eee" }, values: countFormat, size: 50 }];
  if (hasMs) {
    axes.push({ scale: "ms", side: 1, stroke: "#555", grid: { show: false }, values: (_u, s) => s.map((v) => `${v} ms`), size: 70 });
  }
  const opts: uPlot.Options = {
    width: widthOf(container),
    height: options.height ?? 220,
    cursor: { drag: { x: true, y: false } },
    scales: {
      // One point (or all at one time) would make uPlot stretch the axis over years.
      x: { time: true, range: (_u, min, max) => (min === max ? [min - 60, max + 1] : [min, max]) },
      y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max)] } },
    axes,
    series: [
      {},
      ...options.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 1.5,
        scale: s.scale ?? "y",
        fill: s.fill ? `${s.color}22` : undefined,
        spanGaps: s.scale === "ms",
        points: { show: false },
      })),
    ],
  };
  const plot = new uPlot(opts, data, container);
  let observer: ResizeObserver | null = null;
  if (typeof ResizeObserver !== "undefined") {
    observer = new ResizeObserver(() => {
      const w = widthOf(container);
      if (w !== plot.width) plot.setSize({ width: w, height: plot.height });
    });
    observer.observe(container);
  }
  return {
    setData(d: uPlot.AlignedData) {
      plot.setData(d);
    },
    destroy() {
      observer?.disconnect();
      plot.destroy();
    },
  };
}
