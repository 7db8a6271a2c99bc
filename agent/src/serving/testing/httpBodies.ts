/** Test helpers: read an API response body as JSON or as its SSE data payloads. */

/** Parsed JSON body (JSON.parse's type, so tests can index freely). */
export async function jsonOf(res: Response): Promise<ReturnType<typeof JSON.parse>> {
  return JSON.parse(await res.text());
}

/** The data payloads of an SSE body, in order (`[DONE]` included). */
export async function sseData(res: Response): Promise<string[]> {
  return (await res.text())
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => b.slice(6));
}
