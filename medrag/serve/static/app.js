// The coders' page: ask (streamed, cited), codes, search, the claim-line check and what changed, over the same API
// a script would call.
// Every piece of server text goes through textContent: nothing from the corpus is parsed as HTML. Every URL is
// relative to the page, so the page works under a proxy's sub-path (MEDRAG_ROOT_PATH) as at the root.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// -- tabs: click, or arrow keys between them ------------------------------------------------------------------
const tabs = [...document.querySelectorAll('[role="tab"]')];
function selectTab(tab) {
  for (const other of tabs) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
  tab.focus();
  $(tab.getAttribute("aria-controls")).querySelector("input").focus();
}
tabs.forEach((tab, i) => {
  tab.addEventListener("click", () => selectTab(tab));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (step) selectTab(tabs[(i + step + tabs.length) % tabs.length]);
  });
});

// -- the API, with the token when the server asks for one ------------------------------------------------------
function headers(json) {
  const out = json ? { "Content-Type": "application/json" } : {};
  const token = sessionStorage.getItem("medrag-token") || $("token").value;
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}
$("token").addEventListener("change", () => sessionStorage.setItem("medrag-token", $("token").value));

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try { message = (await response.json()).detail || message; } catch (_) { /* not JSON */ }
  if (response.status === 401) { $("token-box").hidden = false; $("token").focus(); }
  return message;
}

async function getJson(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value) query.append(name, value);
  const response = await fetch(`${path}?${query}`, { headers: headers(false) });
  if (!response.ok) throw new Error(await failure(response));
  return response.json();
}

function setStatus(id, text, isError = false) {
  $(id).textContent = text;
  $(id).classList.toggle("error", isError);
}

// -- ask: streamed sentence by sentence ------------------------------------------------------------------------
const REFUSALS = {
  insufficient_evidence: "The sources found do not answer this question.",
  failed_validation: "No sentence of the draft answer passed the citation and code checks.",
};

function citedSentence(text) {
  const p = el("p");
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    p.append(text.slice(last, match.index));
    p.append(el("a", { class: "cite", href: `#source-${match[1]}`, text: match[0] }));
    last = match.index + match[0].length;
  }
  p.append(text.slice(last));
  return p;
}

function showSources(answer) {
  const list = $("sources");
  list.replaceChildren();
  for (const source of answer.citations) {
    const label = `${source.source.toUpperCase()} ${source.key}`;
    const item = el("li", { id: `source-${source.n}`, value: String(source.n) },
      el("strong", { text: `${label}: ${source.title}` }),
      el("div", { class: "meta", text: `Release ${source.release}. ${source.authority}` }));
    if (source.url) item.append(el("div", {}, el("a", { href: source.url, rel: "noopener", text: "Read it at CMS" })));
    list.append(item);
  }
  $("sources-heading").hidden = answer.citations.length === 0;
}

function showFinal(answer) {
  if (answer.refused) {
    $("answer").replaceChildren(el("p", { class: "refusal",
      text: `No answer: ${REFUSALS[answer.refusal_reason] || answer.refusal_reason} (${answer.refusal_reason})` }));
  } else if (!$("answer").childElementCount) {
    // Nothing streamed (a proxy that buffers): the final event carries the whole answer.
    $("answer").append(citedSentence(answer.answer));
  }
  showSources(answer);
  const seconds = ((answer.timings_ms.total || 0) / 1000).toFixed(1);
  setStatus("ask-status", `${answer.degraded ? "Answered from the sources' own sentences (the LLM failed). " : ""}`
    + `${answer.backend}, ${seconds} s`);
}

async function ask(event) {
  event.preventDefault();
  const form = new FormData($("ask-form"));
  const filters = {};
  for (const name of ["source", "state", "contractor", "as_of", "release"]) {
    const value = (form.get(name) || "").trim();
    if (value) filters[name] = name === "state" ? value.toUpperCase() : value;
  }
  $("answer").replaceChildren();
  $("sources").replaceChildren();
  $("sources-heading").hidden = true;
  setStatus("ask-status", "Searching the sources ...");
  try {
    const response = await fetch("ask?stream=true", { method: "POST", headers: headers(true),
      body: JSON.stringify({ question: form.get("question"), filters }) });
    if (!response.ok) throw new Error(await failure(response));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = (block.match(/^event: (.*)$/m) || [])[1];
        const data = JSON.parse((block.match(/^data: (.*)$/m) || [])[1] || "{}");
        if (name === "sentence") {
          $("answer").append(citedSentence(data.text));
          setStatus("ask-status", "Answering ...");
        } else if (name === "final") {
          showFinal(data);
        } else if (name === "error") {
          throw new Error(data.error);
        }
      }
    }
  } catch (error) {
    setStatus("ask-status", error.message, true);
  }
}
$("ask-form").addEventListener("submit", ask);

// -- codes ------------------------------------------------------------------------------------------------------
function codeCard(result) {
  const billable = result.billable === null ? "" : (result.billable ? "billable" : "not billable");
  const card = el("div", { class: "code", "data-code": result.code },
    el("div", { class: "head" },
      el("span", { class: "codeid", text: result.code }),
      el("span", { text: result.display }),
      el("span", { class: `tier tier-${result.tier}`, text: `${result.tier} ${result.confidence.toFixed(2)}` }),
      el("span", { class: "meta", text: [result.system, billable].filter(Boolean).join(", ") })));
  const parents = result.related.filter((item) => item.source === "icd10cm");
  const lcds = result.related.filter((item) => item.source === "lcd");
  if (parents.length) {
    card.append(el("div", { class: "meta", text: "Parents: " + parents.map((p) => `${p.key} ${p.title}`).join("; ") }));
  }
  if (lcds.length) {
    const list = el("ul", { class: "lcds" });
    for (const lcd of lcds) {
      const who = lcd.contractors && lcd.contractors.length ? ` (${lcd.contractors.join("; ")})` : "";
      const title = lcd.title === `LCD ${lcd.key}` ? "" : ` ${lcd.title}`;
      list.append(el("li", { "data-lcd": lcd.key, text: `LCD ${lcd.key}${title}${who}` }));
    }
    card.append(el("div", { class: "meta", text: "Listed in:" }), list);
  }
  return card;
}

$("codes-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  setStatus("codes-status", "Looking up codes ...");
  $("codes").replaceChildren();
  try {
    const found = await getJson("codes", { term: form.get("term"), system: form.get("system") });
    setStatus("codes-status", found.summary);
    $("codes").append(...found.results.map(codeCard));
    const trace = el("details", {}, el("summary", { text: "How these were found" }),
      el("ul", {}, ...found.trace.map((step) => el("li", { text: step }))));
    $("codes").append(trace);
  } catch (error) {
    setStatus("codes-status", error.message, true);
  }
});

// -- search -----------------------------------------------------------------------------------------------------
$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  setStatus("search-status", "Searching ...");
  $("hits").replaceChildren();
  try {
    const found = await getJson("search", { q: new FormData(event.target).get("q") });
    setStatus("search-status", `${found.hits.length} hits in ${Math.round(found.timings_ms.total)} ms`);
    for (const hit of found.hits) {
      const item = el("li", {},
        el("strong", { text: `${hit.source.toUpperCase()} ${hit.key}: ${hit.title}` }),
        el("div", { class: "meta", text: `${hit.heading} (release ${hit.release}, ` + (hit.ranked_by === "codes"
          ? `code finder confidence ${hit.score.toFixed(2)})` : `score ${hit.score.toFixed(3)})`) }),
        el("div", { class: "text", text: hit.text }));
      if (hit.url) item.append(el("a", { href: hit.url, rel: "noopener", text: "Read it at CMS" }));
      $("hits").append(item);
    }
  } catch (error) {
    setStatus("search-status", error.message, true);
  }
});

// -- check a claim line -----------------------------------------------------------------------------------------
function findingRow(finding) {
  const basis = finding.basis || {};
  const where = [basis.source && `${basis.source} ${basis.release}`, basis.code || basis.id].filter(Boolean).join(" ");
  const dates = basis.effective ? ` (${basis.effective} to ${basis.termination || "open"})` : "";
  const message = el("td", { text: finding.message });
  for (const item of finding.candidates || []) {
    message.append(el("div", { class: "meta", text: `${item.relation}: ${item.code}, from ${item.effective}: ${item.description}` }));
  }
  if (basis.url) message.append(el("a", { href: basis.url, rel: "noopener", text: ` ${basis.id} at CMS` }));
  return el("tr", { class: `verdict-${finding.verdict.replace(" ", "-")}` },
    el("td", { class: "verdict", text: finding.verdict }), el("td", { text: finding.rule }), message,
    el("td", { class: "meta", text: where + dates }));
}

$("check-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const line = Object.fromEntries(["dos", "hcpcs", "modifiers", "dx", "state"]
    .map((name) => [name, form.get(name).trim()]).filter(([, value]) => value));
  setStatus("check-status", "Checking ...");
  $("findings").replaceChildren();
  try {
    const response = await fetch("check", { method: "POST", headers: headers(true), body: JSON.stringify({ lines: [line] }) });
    if (!response.ok) throw new Error(await failure(response));
    const [checked] = (await response.json()).lines;
    setStatus("check-status", checked.errors ? `${checked.errors} error(s) on this line` : "No errors on this line");
    $("findings").append(el("tr", {}, ...["verdict", "rule", "finding", "release row"].map((name) => el("th", { text: name }))),
      ...checked.findings.map(findingRow));
  } catch (error) {
    setStatus("check-status", error.message, true);
  }
});

// -- what changed -------------------------------------------------------------------------------------------------
const CHANGES_SHOWN = 50;  // per change set; `medrag changes --csv` lists every one

function changeWhat(change) {
  const cell = el("td");
  if (change.field && (change.old_value || change.new_value)) {
    cell.append(el("div", { text: `${change.field}: ${change.old_value || "—"} → ${change.new_value || "—"}` }));
  }
  if (change.item_kind === "lcd" && change.codes.length) cell.append(el("div", { text: `HCPCS ${change.codes.join(", ")}` }));
  for (const sentence of change.detail.sentences_added || []) cell.append(el("div", { class: "added", text: `+ ${sentence}` }));
  for (const sentence of change.detail.sentences_removed || []) cell.append(el("div", { class: "removed", text: `− ${sentence}` }));
  if (change.detail.revision) cell.append(el("div", { class: "meta", text: change.detail.revision }));
  if (change.your_codes) {
    cell.append(el("div", { class: "meta", text: "your codes: " + change.your_codes.map((c) => `${c.code} (${c.relation})`).join(", ") }));
  }
  return cell;
}

function changeSetBlock(set) {
  const heading = set.from_label ? `${set.source}: ${set.from_label} → ${set.to_label}`
    : `${set.source}: what export ${set.to_label} dates itself` + (set.since ? `, on or after ${set.since}` : "");
  const counts = Object.entries(set.counts).map(([name, count]) => `${name.replaceAll("_", " ")} ${count}`).join(", ");
  const table = el("table", { class: "changes" },
    el("tr", {}, ...["change", "item", "title", "effective", "what changed"].map((name) => el("th", { text: name }))));
  for (const change of set.changes.slice(0, CHANGES_SHOWN)) {
    table.append(el("tr", {}, el("td", { text: change.change.replaceAll("_", " ") }),
      el("td", { text: `${change.item_kind.toUpperCase()} ${change.item}` }), el("td", { text: change.title || "" }),
      el("td", { class: "meta", text: change.effective_date || "" }), changeWhat(change)));
  }
  const more = set.changes.length > CHANGES_SHOWN ? el("p", { class: "meta", text: `… and ${set.changes.length - CHANGES_SHOWN} more` }) : null;
  return el("section", { class: "change-set" }, el("h3", { text: heading }), el("p", { text: counts || "no changes" }),
    ...set.notes.map((note) => el("p", { class: "meta", text: note })), set.changes.length ? table : null, more);
}

$("changes-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  setStatus("changes-status", "Reading the changes ...");
  $("change-sets").replaceChildren();
  try {
    const params = { source: form.get("source"), since: form.get("since"), codes: form.get("codes").trim() };
    const digest = await getJson("changes", params);
    const total = digest.sets.reduce((sum, set) => sum + set.changes.length, 0);
    setStatus("changes-status", `${total} change(s) in ${digest.sets.length} comparison(s)`);
    $("change-sets").append(...digest.sets.map(changeSetBlock),
      ...digest.gaps.map((gap) => el("p", { class: "gap", text: gap.message })));
  } catch (error) {
    setStatus("changes-status", error.message, true);
  }
});
