/**
 * A stacked bar chart per day (Billing's spend by type, Machines' earnings), drawn by Chart.js on a canvas. Imported
 * only by pages that load lazily, so Chart.js never weighs on the first page (issue 15's budget). A canvas says
 * nothing to a screen reader: the same numbers are in a table below it, and series differ by pattern-free labels in
 * the legend and the table, not only by colour.
 */
import { useEffect, useId, useRef } from 'react';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { dollars } from '../lib/format.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

export interface Series {
  label: string;
  values: number[];
  color: string;
}

export function BarChart({ title, labels, series }: { title: string; labels: string[]; series: Series[] }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);
  const tableId = useId();

  useEffect(() => {
    if (!canvas.current) return;
    chart.current?.destroy();
    chart.current = new Chart(canvas.current, {
      type: 'bar',
      data: { labels, datasets: series.map((s) => ({ label: s.label, data: s.values, backgroundColor: s.color, borderColor: '#111827', borderWidth: 1 })) },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { callback: (v) => dollars(Number(v)) } } },
        plugins: { tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${dollars(Number(c.raw))}` } } },
      },
    });
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
  }, [labels, series]);

  return (
    <figure>
      <div className="chart-box">
        <canvas ref={canvas} role="img" aria-label={`${title}: bar chart; the numbers are in the table below`} aria-describedby={tableId} />
      </div>
      <details>
        <summary>{title}: the numbers</summary>
        <div className="table-wrap">
          <table id={tableId}>
            <caption className="sr-only">{title}</caption>
            <thead><tr><th scope="col">Day</th>{series.map((s) => <th key={s.label} scope="col">{s.label}</th>)}</tr></thead>
            <tbody>
              {labels.map((l, i) => (
                <tr key={l}><th scope="row">{l}</th>{series.map((s) => <td key={s.label}>{dollars(s.values[i] ?? 0)}</td>)}</tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
