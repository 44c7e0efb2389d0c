/** A page part 2 of issue 15 fills in; it says so rather than showing nothing. */
export function Placeholder({ title, what }: { title: string; what: string }) {
  return (
    <section>
      <h1>{title}</h1>
      <p>{what}</p>
      <p className="muted">This page is not built yet; the CLI (`gpuplane --help`) and the API do all of it today.</p>
    </section>
  );
}
