// The page's behaviour: send the question to POST v1/ask and show what comes back — the answers with
// their evidence lines, the evidence as a graph, and a link to the same evidence in Neo4j Browser.
// Everything the server returns is graph data (entity names, relation names, messages), so it only
// ever reaches the page through textContent or as Cytoscape data, never as HTML.
"use strict";

(function () {
  const byId = (id) => document.getElementById(id);
  let graphView = null;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function show(id, visible) {
    byId(id).hidden = !visible;
  }

  function setBusy(busy) {
    byId("ask").disabled = busy;
    byId("status").textContent = busy ? "Asking… the first question also loads the models, which takes a while." : "";
  }

  function showError(message) {
    const box = byId("error");
    box.textContent = message;
    box.hidden = false;
  }

  function request() {
    const body = { question: byId("question").value.trim() };
    const topics = byId("topics")
      .value.split("\n")
      .map((line) => line.trim())
      .filter((line) => line.length > 0);
    body.topics = topics.length > 0 ? topics : null;
    const k = byId("k").value.trim();
    if (k !== "") body.k = Number(k);
    return body;
  }

  async function readJson(response) {
    try {
      return await response.json();
    } catch (_) {
      return null; // not JSON: a proxy's error page, or an empty body
    }
  }

  function errorText(response, data) {
    const error = data && typeof data === "object" ? data.error : null;
    if (error && typeof error.message === "string") return error.message; // it names the parameter
    return `The service answered ${response.status} ${response.statusText}`.trim() + ".";
  }

  async function ask(event) {
    event.preventDefault();
    const body = request();
    if (!body.question) return;
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    const token = byId("token").value.trim();
    if (token) headers.Authorization = `Bearer ${token}`;
    show("error", false);
    setBusy(true);
    try {
      const response = await fetch("v1/ask", { method: "POST", headers, body: JSON.stringify(body) });
      const data = await readJson(response);
      if (!response.ok || !data) {
        showError(errorText(response, data));
        return;
      }
      showResult(data);
    } catch (err) {
      showError(`The service could not be reached: ${err.message}`);
    } finally {
      setBusy(false);
    }
  }

  function showResult(data) {
    byId("result-question").textContent = data.question || "";
    const meta = [];
    const topics = Array.isArray(data.topic_names) && data.topic_names.length ? data.topic_names : data.topics;
    if (Array.isArray(topics) && topics.length) meta.push(`Topics: ${topics.join(", ")}`);
    if (data.retriever) meta.push(`retriever ${data.retriever}`);
    if (data.reasoner) meta.push(`reasoner ${data.reasoner}`);
    if (data.run) meta.push(`run ${data.run}`);
    if (typeof data.confidence === "number") {
      const sure = `confidence ${data.confidence.toFixed(2)}`;
      meta.push(data.sure === false ? `not sure: ${sure}, below ${Number(data.min_confidence).toFixed(2)}` : sure);
    }
    byId("result-meta").textContent = meta.join(" · ");
    const notes = [data.error, data.retriever_note].filter((x) => typeof x === "string" && x);
    byId("result-note").textContent = notes.join(" ");
    show("result-note", notes.length > 0);
    show("result", true);
    showAnswers(Array.isArray(data.answers) ? data.answers : []);
    drawGraph(data.graph);
    showBrowserLink(data.browser_url, data.browser_query);
  }

  function showAnswers(answers) {
    const list = byId("answers");
    list.replaceChildren();
    show("no-answers", answers.length === 0);
    for (const a of answers) {
      const item = element("li", "answer");
      const head = element("div", "answer-head");
      head.append(element("span", "answer-name", a.answer));
      head.append(element("span", a.grounded ? "badge grounded" : "badge ungrounded", a.grounded ? "in the graph" : "not in the graph"));
      if (typeof a.confidence === "number") {
        head.append(element("span", "confidence", `confidence ${a.confidence.toFixed(2)}`));
      }
      item.append(head);
      const lines = Array.isArray(a.evidence) ? a.evidence : [];
      if (lines.length) {
        const evidence = element("ul", "evidence");
        for (const line of lines) evidence.append(element("li", null, line));
        item.append(evidence);
      } else {
        item.append(element("p", "meta", "No evidence line."));
      }
      list.append(item);
    }
  }

  const MAX_FIT_ZOOM = 1.4;
  const STYLE = [
    {
      selector: "node",
      style: {
        label: "data(label)",
        "font-family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
        "font-size": 13,
        color: "#1f2933",
        "text-valign": "bottom",
        "text-margin-y": 4,
        "text-wrap": "wrap",
        "text-max-width": 130,
        "background-color": "#9aa5b1",
        width: 18,
        height: 18,
      },
    },
    {
      selector: 'node[role = "topic"]',
      style: { "background-color": "#2563eb", shape: "round-rectangle", width: 26, height: 20, "font-weight": "bold" },
    },
    {
      selector: 'node[role = "answer"]',
      style: {
        "background-color": "#16a34a",
        "border-color": "#14532d",
        "border-width": 2,
        width: 24,
        height: 24,
        "font-weight": "bold",
      },
    },
    {
      selector: "edge",
      style: {
        label: "data(label)",
        "font-size": 10,
        color: "#52606d",
        width: 1.5,
        "line-color": "#bcccdc",
        "target-arrow-color": "#bcccdc",
        "target-arrow-shape": "triangle",
        "curve-style": "bezier",
        "control-point-step-size": 70, // room between parallel edges for their labels
        "text-rotation": "autorotate",
        "text-background-color": "#ffffff",
        "text-background-opacity": 0.9,
        "text-background-padding": 2,
      },
    },
  ];

  function graphElements(graph) {
    const nodes = graph && Array.isArray(graph.nodes) ? graph.nodes : [];
    const edges = graph && Array.isArray(graph.edges) ? graph.edges : [];
    const ids = new Set();
    const out = [];
    for (const n of nodes) {
      if (typeof n.id !== "string" || ids.has(n.id)) continue;
      ids.add(n.id);
      const role = n.role === "topic" || n.role === "answer" ? n.role : "other";
      out.push({ group: "nodes", data: { id: n.id, label: n.name || "", role } });
    }
    edges.forEach((e, i) => {
      if (!ids.has(e.source) || !ids.has(e.target)) return;
      out.push({ group: "edges", data: { id: `edge-${i}`, source: e.source, target: e.target, label: e.relation || "" } });
    });
    return out;
  }

  function edgeLines(elements) {
    const names = new Map(elements.filter((x) => x.group === "nodes").map((x) => [x.data.id, x.data.label || x.data.id]));
    const list = byId("graph-edges");
    list.replaceChildren();
    for (const x of elements) {
      if (x.group !== "edges") continue;
      list.append(element("li", null, `${names.get(x.data.source)} —${x.data.label}→ ${names.get(x.data.target)}`));
    }
  }

  function drawGraph(graph) {
    if (graphView) {
      graphView.destroy();
      graphView = null;
    }
    const elements = graphElements(graph);
    const empty = !elements.some((x) => x.group === "nodes");
    show("graph", !empty);
    show("graph-text", !empty);
    show("no-graph", empty);
    edgeLines(elements);
    if (empty || typeof window.cytoscape !== "function") return;
    const roots = elements.filter((x) => x.data.role === "topic").map((x) => `#${CSS.escape(x.data.id)}`);
    graphView = window.cytoscape({
      container: byId("graph"),
      elements,
      style: STYLE,
      layout: roots.length
        ? { name: "breadthfirst", roots: roots.join(", "), directed: false, spacingFactor: 1.8, padding: 30 }
        : { name: "cose", padding: 24, animate: false },
      minZoom: 0.3,
      maxZoom: 3,
    });
    // A graph of a few nodes would be fitted at a zoom that blows its labels up.
    if (graphView.zoom() > MAX_FIT_ZOOM) {
      graphView.zoom(MAX_FIT_ZOOM);
      graphView.center();
    }
  }

  function showBrowserLink(url, query) {
    const ok = typeof url === "string" && /^https?:\/\//i.test(url);
    show("browser", ok);
    const link = byId("browser-link");
    if (ok) link.href = url;
    else link.removeAttribute("href");
    byId("browser-query").textContent = typeof query === "string" ? query : "";
  }

  // The tests read the drawn graph through this (the canvas itself holds no text).
  window.kgdbPage = {
    graph: () =>
      graphView
        ? {
            nodes: graphView.nodes().map((n) => ({ id: n.id(), name: n.data("label"), role: n.data("role") })),
            edges: graphView.edges().map((e) => ({ source: e.source().id(), target: e.target().id(), relation: e.data("label") })),
          }
        : null,
  };

  byId("ask-form").addEventListener("submit", ask);
})();
