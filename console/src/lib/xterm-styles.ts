/**
 * xterm.js and the console's Content-Security-Policy (src/webconsole/console-routes.ts: `style-src 'self'`, no inline
 * style). xterm writes its computed styles (cell sizes, colours, its scrollbar) as the text of `<style>` elements it
 * creates; the policy blocks those (a violation, and a terminal drawn with no row height). Rather than weaken the
 * policy for every page, the `<style>` elements xterm creates while `fn` runs are stand-ins: inert `<template>`
 * elements whose `textContent`/`innerText` go into a constructed stylesheet adopted by the document (CSSOM, which the
 * policy allows), and whose `sheet` is that stylesheet; removing one drops its sheet. Only `fn`'s own
 * `document.createElement('style')` calls are changed, synchronously; the page's other elements are untouched.
 */
export function withConstructedStyles<T>(fn: () => T): T {
  const original = document.createElement;
  document.createElement = function (this: Document, tag: string, options?: ElementCreationOptions) {
    if (tag.toLowerCase() !== 'style') return original.call(this, tag, options);
    return styleStandIn(this);
  } as typeof document.createElement;
  try {
    return fn();
  } finally {
    document.createElement = original;
  }
}

function styleStandIn(doc: Document): HTMLElement {
  const el = doc.createElementNS('http://www.w3.org/1999/xhtml', 'template') as HTMLElement;
  const sheet = new CSSStyleSheet();
  let text = '';
  const adopt = () => {
    if (!doc.adoptedStyleSheets.includes(sheet)) doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
  };
  const set = (v: string | null) => {
    text = v ?? '';
    sheet.replaceSync(text);
    adopt();
  };
  const removeOwn = el.remove.bind(el);
  Object.defineProperties(el, {
    textContent: { get: () => text, set, configurable: true },
    innerText: { get: () => text, set, configurable: true },
    sheet: { get: () => sheet, configurable: true },
    remove: {
      value: () => {
        doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
        removeOwn();
      },
      configurable: true,
    },
  });
  adopt();
  return el;
}
