import "./style.css";
import { setApiKey } from "./api";
import { startDashboard } from "./dashboard";
import { startPlayground } from "./playground";

function tabs(): void {
  const buttons = document.querySelectorAll<HTMLButtonElement>("nav button[data-tab]");
  for (const b of buttons) {
    b.addEventListener("click", () => {
      for (const other of buttons) {
        other.classList.toggle("active", other === b);
        document.getElementById(other.dataset.tab!)!.hidden = other !== b;
      }
      window.dispatchEvent(new Event("resize")); // charts take their width once visible
    });
  }
}

function keyInput(): void {
  const input = document.querySelector<HTMLInputElement>("#api-key")!;
  input.addEventListener("change", () => setApiKey(input.value.trim()));
}

tabs();
keyInput();
const model = document.querySelector<HTMLElement>("#model")!;
startDashboard(document.querySelector<HTMLElement>("#dashboard")!, (s) => {
  model.textContent = `${s.model} · version ${s.version} · up ${s.uptime_s} s · window ${s.window}`;
});
startPlayground(document.querySelector<HTMLElement>("#playground")!);
