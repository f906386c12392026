// Rendition's web page: plain JavaScript, no build step, no third-party code.
// Every URL is relative, so the page works at "/" and "/ui", and under a proxy's path prefix.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const state = { settings: null, languages: [], detected: null };

  // -- requests and readable errors ---------------------------------------------------------------

  function apiKey() {
    return $("api-key").value.trim();
  }

  function showKeyField(focus) {
    $("key-section").hidden = false;
    if (focus) $("api-key").focus();
  }

  // The message of an error body in any of the service's shapes (LibreTranslate, OpenAI, TEI, FastAPI).
  function bodyMessage(body) {
    if (!body) return "";
    if (typeof body.error === "string") return body.error;
    if (body.error && typeof body.error.message === "string") return body.error.message;
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg).join("; ");
    return "";
  }

  async function describeError(res) {
    let body = null;
    try {
      body = await res.json();
    } catch (e) {
      body = null;
    }
    const msg = bodyMessage(body) || res.statusText || "no details";
    const retry = res.headers.get("Retry-After");
    const again = retry ? `Try again in ${retry} s.` : "Try again shortly.";
    switch (res.status) {
      case 429:
        return `The server is busy (${msg}). ${again}`;
      case 413:
        return `Too large: ${msg}.`;
      case 401:
      case 403:
        showKeyField(true);
        return apiKey() ? `The API key was not accepted (${msg}).` : `This server needs an API key: enter it above (${msg}).`;
      case 503:
        return `The server cannot answer now (${msg}). ${again}`;
      case 504:
        return `No answer in time (${msg}).`;
      default:
        return `Error ${res.status}: ${msg}`;
    }
  }

  // fetch + JSON; throws Error(readable message) on a network error or a non-2xx answer.
  async function call(path, options = {}) {
    const headers = { Accept: "application/json", ...(options.headers || {}) };
    if (options.json !== undefined) headers["Content-Type"] = "application/json";
    if (options.bearer && apiKey()) headers.Authorization = `Bearer ${apiKey()}`;
    let res;
    try {
      res = await fetch(path, {
        method: options.method || (options.json !== undefined || options.form ? "POST" : "GET"),
        headers,
        body: options.json !== undefined ? JSON.stringify(options.json) : options.form,
      });
    } catch (e) {
      throw new Error(`Cannot reach the server (${e.message}).`);
    }
    if (!res.ok) {
      const err = new Error(await describeError(res));
      err.status = res.status;
      throw err;
    }
    return res.json();
  }

  function showError(id, message) {
    const el = $(id);
    el.textContent = message || "";
    el.hidden = !message;
  }

  function busy(button, on, label) {
    button.disabled = on;
    if (label) button.textContent = label;
    button.setAttribute("aria-busy", on ? "true" : "false");
  }

  // -- start-up: wait for the models, then read the settings and languages -------------------------

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function waitReady() {
    for (;;) {
      try {
        const res = await fetch("health/ready", { headers: { Accept: "application/json" } });
        const body = await res.json().catch(() => ({}));
        if (res.ok) return body.models || [];
        if (body.status === "failed") throw new Error(`The server could not load its models: ${body.error}`);
        $("status").textContent = body.status === "draining" ? "The server is shutting down…" : "Loading the models…";
      } catch (e) {
        if (e.message.startsWith("The server could not")) throw e;
        $("status").textContent = "Waiting for the server…";
      }
      await sleep(1000);
    }
  }

  function languageName(code) {
    const lang = state.languages.find((l) => l.code === code);
    return lang ? lang.name : code;
  }

  function fillTargets() {
    const source = $("source").value;
    const target = $("target");
    const keep = target.value;
    const codes = source === "auto" ? state.languages.map((l) => l.code) : state.languages.find((l) => l.code === source).targets;
    target.replaceChildren(...codes.map((c) => new Option(languageName(c), c)));
    if (codes.includes(keep)) target.value = keep;
  }

  async function setUpTranslation(settings) {
    state.languages = await call("languages");
    const source = $("source");
    source.replaceChildren(
      new Option("Detect the language", "auto"),
      ...state.languages.map((l) => new Option(l.name, l.code))
    );
    source.value = "auto";
    fillTargets();
    const preferred = settings.language && settings.language.target && settings.language.target.code;
    if (preferred && [...$("target").options].some((o) => o.value === preferred)) $("target").value = preferred;
    updateCounter();
    $("translate-section").hidden = false;
    if (settings.filesTranslation) setUpFiles(settings);
  }

  async function start() {
    let models;
    try {
      models = await waitReady();
    } catch (e) {
      $("status").textContent = e.message;
      return;
    }
    const parts = [];
    if (models.includes("translator")) {
      try {
        state.settings = await call("frontend/settings");
        if (state.settings.keyRequired) showKeyField(false);
        await setUpTranslation(state.settings);
        parts.push("translation");
      } catch (e) {
        showError("translate-error", e.message);
        $("translate-section").hidden = false;
      }
    }
    if (models.includes("encoder")) {
      $("embed-section").hidden = false;
      parts.push("embeddings");
    }
    $("status").textContent = parts.length ? `Ready: ${parts.join(" and ")}.` : "No model is enabled on this server.";
    document.body.dataset.ready = "true";
  }

  // -- translation -------------------------------------------------------------------------------

  function updateCounter() {
    const n = [...$("text").value].length; // characters, as the server counts them (code points)
    const limit = state.settings ? state.settings.charLimit : null;
    const counter = $("counter");
    counter.textContent = limit ? `${n.toLocaleString()} / ${limit.toLocaleString()} characters` : `${n.toLocaleString()} characters`;
    counter.classList.toggle("over", Boolean(limit && n > limit));
    if (limit && n > limit) counter.textContent += " (over the limit)";
  }

  function setTranslation(text) {
    $("translation").value = text;
    $("copy").disabled = !text;
    $("copied").textContent = "";
  }

  function showAlternatives(alternatives) {
    const list = $("alternatives");
    list.replaceChildren(
      ...alternatives.map((alt) => {
        const li = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = alt;
        button.title = "Use this translation";
        button.addEventListener("click", () => {
          const current = $("translation").value;
          setTranslation(alt);
          button.textContent = current;
        });
        li.append(button);
        return li;
      })
    );
    $("alternatives-box").hidden = alternatives.length === 0;
  }

  async function translate(event) {
    if (event) event.preventDefault();
    const text = $("text").value;
    showError("translate-error", "");
    if (!text.trim()) {
      showError("translate-error", "Type a text to translate first.");
      $("text").focus();
      return;
    }
    const button = $("translate-button");
    busy(button, true, "Translating…");
    try {
      const body = {
        q: text,
        source: $("source").value,
        target: $("target").value,
        format: "text",
        alternatives: Number($("alternatives-count").value),
        api_key: apiKey(),
      };
      const out = await call("translate", { json: body });
      setTranslation(out.translatedText);
      showAlternatives(out.alternatives || []);
      state.detected = out.detectedLanguage ? out.detectedLanguage.language : null;
      $("detected").textContent = out.detectedLanguage
        ? `Detected: ${languageName(out.detectedLanguage.language)} (${out.detectedLanguage.confidence}%)`
        : "";
    } catch (e) {
      showError("translate-error", e.message);
    } finally {
      busy(button, false, "Translate");
    }
  }

  function swap() {
    const source = $("source");
    const target = $("target");
    const from = source.value === "auto" ? state.detected : source.value;
    const to = target.value;
    source.value = to;
    fillTargets();
    const others = [...target.options].map((o) => o.value);
    if (from && others.includes(from)) target.value = from;
    const translation = $("translation").value;
    if (translation) {
      $("text").value = translation;
      setTranslation("");
      showAlternatives([]);
      $("detected").textContent = "";
      updateCounter();
    }
  }

  async function copy() {
    const text = $("translation").value;
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      $("translation").select(); // no clipboard API (a page served over plain HTTP to another host)
      document.execCommand("copy");
    }
    $("copied").textContent = "Copied.";
  }

  // -- file translation (shown only when the server says it has it) ------------------------------

  function setUpFiles(settings) {
    const formats = settings.supportedFilesFormat || [];
    if (formats.length) {
      $("file").accept = formats.join(",");
      $("file-formats").textContent = `Formats: ${formats.join(", ")}. Uses the languages chosen above.`;
    } else {
      $("file-formats").textContent = "Uses the languages chosen above.";
    }
    $("file-section").hidden = false;
  }

  async function translateFile(event) {
    event.preventDefault();
    showError("file-error", "");
    $("file-result").replaceChildren();
    const file = $("file").files[0];
    if (!file) {
      showError("file-error", "Choose a file first.");
      return;
    }
    const form = new FormData();
    form.append("file", file);
    form.append("source", $("source").value);
    form.append("target", $("target").value);
    form.append("api_key", apiKey());
    const button = $("file-button");
    busy(button, true, "Translating…");
    try {
      const out = await call("translate_file", { form, bearer: true });
      const link = document.createElement("a");
      link.href = out.translatedFileUrl;
      link.textContent = "Download the translated file";
      link.setAttribute("download", "");
      $("file-result").replaceChildren(link);
      link.focus();
    } catch (e) {
      showError("file-error", e.message);
    } finally {
      busy(button, false, "Translate the file");
    }
  }

  // -- embeddings: cosine similarity of a query to a few sentences -------------------------------

  function cosine(a, b) {
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let i = 0; i < a.length; i++) {
      dot += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
    return na && nb ? dot / Math.sqrt(na * nb) : 0;
  }

  async function compare(event) {
    event.preventDefault();
    showError("embed-error", "");
    const query = $("query").value;
    const sentences = $("sentences").value.split("\n").filter((s) => s.trim());
    if (!query.trim() || !sentences.length) {
      showError("embed-error", "Give a query and at least one sentence.");
      return;
    }
    const button = $("embed-button");
    busy(button, true, "Comparing…");
    try {
      const out = await call("v1/embeddings", { json: { input: [query, ...sentences] }, bearer: true });
      const vectors = out.data.sort((x, y) => x.index - y.index).map((d) => d.embedding);
      const ranked = sentences
        .map((text, i) => ({ text, score: cosine(vectors[0], vectors[i + 1]) }))
        .sort((x, y) => y.score - x.score);
      $("similarities").replaceChildren(
        ...ranked.map(({ text, score }) => {
          const li = document.createElement("li");
          const meter = document.createElement("meter");
          meter.min = -1;
          meter.max = 1;
          meter.value = score;
          meter.setAttribute("aria-hidden", "true");
          const value = document.createElement("span");
          value.className = "score";
          value.textContent = score.toFixed(3);
          const sentence = document.createElement("span");
          sentence.className = "sentence";
          sentence.textContent = text;
          li.append(meter, value, " ", sentence);
          return li;
        })
      );
    } catch (e) {
      $("similarities").replaceChildren();
      showError("embed-error", e.message);
    } finally {
      busy(button, false, "Compare");
    }
  }

  // -- wiring ------------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("translate-form").addEventListener("submit", translate);
    $("text").addEventListener("input", updateCounter);
    $("text").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) translate(e);
    });
    $("source").addEventListener("change", fillTargets);
    $("swap").addEventListener("click", swap);
    $("copy").addEventListener("click", copy);
    $("file-form").addEventListener("submit", translateFile);
    $("embed-form").addEventListener("submit", compare);
    start();
  });
})();
