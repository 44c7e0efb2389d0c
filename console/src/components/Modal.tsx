import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal dialog on the native <dialog>: the browser traps focus in it, Escape closes it and focus returns where it
 * was, so it is keyboard-usable without a library.
 */
export function Modal({ title, open, onClose, children }: { title: string; open: boolean; onClose(): void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      <div className="dialog-head">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="plain" aria-label="Close" onClick={onClose}>✕</button>
      </div>
      {open && children}
    </dialog>
  );
}

/** "Are you sure?" for an action that cannot be undone (destroy) or that interrupts work (stop, reboot). */
export function Confirm({ open, title, message, action, onConfirm, onClose, busy }: {
  open: boolean;
  title: string;
  message: ReactNode;
  action: string;
  busy?: boolean;
  onConfirm(): void;
  onClose(): void;
}) {
  return (
    <Modal title={title} open={open} onClose={onClose}>
      <p>{message}</p>
      <div className="actions">
        <button type="button" onClick={onClose}>Cancel</button>
        <button type="button" className="danger" disabled={busy} onClick={onConfirm}>{action}</button>
      </div>
    </Modal>
  );
}
