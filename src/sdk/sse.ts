/**
 * A server-sent events reader over fetch's body stream (the WHATWG event-stream format), written here because
 * `EventSource` cannot send an Authorization header and Node 20 has none.
 */

export interface ServerEvent {
  /** `event:` field; `message` when absent. */
  event: string;
  data: string;
  id: string | undefined;
}

/** Parses an event stream, yielding each complete event. Lines end in LF, CRLF or CR; `:` lines are comments. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  let lastId: string | undefined;

  const dispatch = (): ServerEvent | undefined => {
    if (id !== undefined) lastId = id;
    const out = data.length ? { event: event || 'message', data: data.join('\n'), id: lastId } : undefined;
    data = [];
    event = '';
    id = undefined;
    return out;
  };

  const line = (text: string): ServerEvent | undefined => {
    if (text === '') return dispatch();
    if (text.startsWith(':')) return undefined;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    return undefined;
  };

  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        // A lone CR at the end may be the first half of CRLF: wait for more input.
        if (!m || (m[0] === '\r' && m.index === buffer.length - 1)) break;
        const ev = line(buffer.slice(0, m.index));
        buffer = buffer.slice(m.index + m[0].length);
        if (ev) yield ev;
      }
    }
  } finally {
    // Stops the download when the consumer leaves early (e.g. the wait is over).
    reader.cancel().catch(() => undefined);
  }
  // A stream that ends mid-event drops that event, as the format says.
}
