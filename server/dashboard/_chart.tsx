/**
 * The overview's chart of events per minute, as SVG drawn on the server: no script, no library.
 * Each minute that had any events carries its counts in `data-*` attributes and a `<title>`
 * (a tooltip on hover), so what the lines show can be read exactly.
 *
 * @module
 */
import { utcTime } from "./_format.ts";

/** The series of the chart, in the order of the legend, with their colours. */
export const SERIES = [
  { key: "accepted", color: "#2563eb" },
  { key: "refused", color: "#d97706" },
  { key: "delivered", color: "#16a34a" },
  { key: "failed", color: "#dc2626" },
] as const;

/** A series' name. */
export type SeriesKey = (typeof SERIES)[number]["key"];

/** One minute's counts. */
export type MinuteCounts = { minuteMs: number } & Record<SeriesKey, number>;

const WIDTH = 720;
const HEIGHT = 160;
const MINUTE_MS = 60_000;

/**
 * The chart of `minutes` counts, one point a minute from `fromMs` to `toMs`.
 * @param props `label`: the chart's name (its `aria-label`); `fromMs`, `toMs`: the span, in ms
 *   since the epoch; `minutes`: the minutes that had any, in any order (others count 0)
 */
export function MinuteChart(
  props: { label: string; fromMs: number; toMs: number; minutes: MinuteCounts[] },
) {
  const first = Math.floor(props.fromMs / MINUTE_MS);
  const count = Math.max(2, Math.floor(props.toMs / MINUTE_MS) - first + 1);
  const inSpan = props.minutes.filter((m) => {
    const index = m.minuteMs / MINUTE_MS - first;
    return index >= 0 && index < count;
  });
  const max = Math.max(1, ...inSpan.flatMap((m) => SERIES.map((s) => m[s.key])));
  const x = (index: number) => (index / (count - 1)) * WIDTH;
  const y = (value: number) => HEIGHT - (value / max) * (HEIGHT - 10);
  const points = (key: SeriesKey) => {
    const values = new Float64Array(count);
    for (const m of inSpan) values[m.minuteMs / MINUTE_MS - first] = m[key];
    return Array.from(values, (v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
  };
  const column = Math.max(2, WIDTH / count);
  return (
    <svg
      class="chart"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={props.label}
      data-max={max}
    >
      <line x1="0" y1={HEIGHT} x2={WIDTH} y2={HEIGHT} stroke="#9ca3af" />
      <text x="2" y="10" font-size="10" fill="#6b7280">{max}</text>
      {SERIES.map((s) => (
        <polyline
          class={`series ${s.key}`}
          points={points(s.key)}
          fill="none"
          stroke={s.color}
          stroke-width="1.5"
        />
      ))}
      {inSpan.map((m) => (
        <MinuteMark minute={m} centerX={x(m.minuteMs / MINUTE_MS - first)} width={column} />
      ))}
    </svg>
  );
}

/**
 * One minute's counts, as data attributes and a hover title over a transparent column.
 * @param props `minute`: its counts; `centerX`, `width`: where its column is, in chart units
 */
function MinuteMark(props: { minute: MinuteCounts; centerX: number; width: number }) {
  const m = props.minute;
  return (
    <g
      class="minute"
      data-minute={new Date(m.minuteMs).toISOString()}
      data-accepted={m.accepted}
      data-refused={m.refused}
      data-delivered={m.delivered}
      data-failed={m.failed}
    >
      <title>
        {`${utcTime(m.minuteMs)}: ${m.accepted} accepted, ${m.refused} refused, ` +
          `${m.delivered} delivered, ${m.failed} failed`}
      </title>
      <rect
        x={(props.centerX - props.width / 2).toFixed(1)}
        y="0"
        width={props.width.toFixed(1)}
        height={HEIGHT}
        fill="transparent"
      />
    </g>
  );
}

/** The chart's legend: each series' colour and name. */
export function Legend() {
  return (
    <p class="legend">
      {SERIES.map((s) => (
        <span>
          <svg width="12" height="12" aria-hidden="true">
            <rect width="12" height="12" fill={s.color} />
          </svg>{" "}
          {s.key}
          {" "}
        </span>
      ))}
    </p>
  );
}
