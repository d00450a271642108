/** Reading the Prometheus text format the way a scraper does, for tests that scrape, act and scrape again. */

export interface Scrape {
  contentType: string;
  text: string;
  /** The value of the sample `name{labels}`; labels must match exactly (every label given). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    labels[match[1] as string] = (match[2] as string).replace(/\\(.)/g, (_all, c: string) =>
      c === 'n' ? '\n' : c,
    );
  }
  return labels;
}

export function parseExposition(contentType: string, text: string): Scrape {
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    samples.push({
      name: match[1] as string,
      labels: parseLabels(match[2] ?? ''),
      value: Number(match[3]),
    });
  }
  return {
    contentType,
    text,
    value(name, labels = {}) {
      const wanted = Object.entries(labels);
      const sample = samples.find(
        (s) =>
          s.name === name &&
          Object.keys(s.labels).length === wanted.length &&
          wanted.every(([key, value]) => s.labels[key] === value),
      );
      return sample?.value;
    },
  };
}

/** GET {url}/metrics, checked to be the Prometheus text format. */
export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(`${url}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return parseExposition(response.headers.get('content-type') ?? '', await response.text());
}
