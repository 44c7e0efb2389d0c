/**
 * A server-sent events reader over fetch's body stream: `EventSource` cannot send an Authorization header, and Node 20
 * has none. The format (the WHATWG event-stream: LF, CRLF or CR line ends, `:` comments, multi-line data, a line cut
 * between chunks) is parsed by `eventsource-parser`, which runs in browsers and Node alike.
 */
import { createParser } from 'eventsource-parser';

export interface ServerEvent {
  /** `event:` field; `message` when absent. */
  event: string;
  data: string;
  /** The last event id the stream has given, as `EventSource.lastEventId` (the parser gives only this event's own). */
  id: string | undefined;
}

/** Parses an event stream, yielding each complete event. A stream that ends mid-event drops that event, as the format says. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let lastId: string | undefined;
  const ready: ServerEvent[] = [];
  /** The last chunk ended in CR: an LF opening the next one is the rest of that CRLF. */
  let afterCr = false;
  const parser = createParser({
    onEvent(ev) {
      if (ev.id !== undefined) lastId = ev.id;
      ready.push({ event: ev.event ?? 'message', data: ev.data, id: lastId });
    },
  });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let text = decoder.decode(value, { stream: true });
      if (text === '') continue;
      if (afterCr && text.startsWith('\n')) text = text.slice(1);
      afterCr = text.endsWith('\r');
      // The parser keeps a chunk's final CR until more text comes (it may be half a CRLF), which would hold back an
      // event that ends there; as browsers do, a CR ends its line at once, so line ends reach it as LF.
      parser.feed(text.replace(/\r\n?/g, '\n'));
      yield* ready.splice(0);
    }
  } finally {
    // Stops the download when the consumer leaves early (e.g. the wait is over).
    reader.cancel().catch(() => undefined);
  }
}
