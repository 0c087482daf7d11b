/* HCP console: draws the charts (Chart.js) and the lineage graph (Cytoscape.js) from the
   JSON the server renders with them (a chart's in its data-chart attribute, the graph's in
   a <script type="application/json"> block). No inline script anywhere: the page's
   Content-Security-Policy allows scripts only from this server. */
(function () {
  "use strict";
  var registry = (window.hcpConsole = window.hcpConsole || { charts: {}, graphs: {}, keyboard: {} });
  var palette = ["#1a5fb4", "#e66100", "#26a269", "#9141ac", "#a51d2d"];

  function data(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function drawChart(canvas) {
    // Drawn once per element: a fragment swapped in again brings a new canvas, same id.
    if (typeof Chart === "undefined" || Chart.getChart(canvas)) return;
    var spec = JSON.parse(canvas.dataset.chart);
    var line = spec.type === "line";
    registry.charts[canvas.id] = new Chart(canvas, {
      type: spec.type,
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (ds, i) {
          return { label: ds.label, data: ds.data, backgroundColor: palette[i % palette.length],
                   borderColor: palette[i % palette.length], pointRadius: line ? 2 : 0,
                   borderWidth: line ? 2 : 0 };
        })
      },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        scales: {
          x: { stacked: !!spec.stacked, title: { display: true, text: spec.x_title } },
          y: { stacked: !!spec.stacked, beginAtZero: !line, title: { display: true, text: spec.y_title } }
        },
        plugins: { legend: { display: spec.datasets.length > 1 } }
      }
    });
  }

  // Labels stay readable: 13 px on a light background at zoom 1, and the graph is never
  // zoomed out below READABLE to fit a long chain (it pans instead: drag, or the arrow keys).
  var READABLE = 0.85;
  var graphStyle = [
    { selector: "node", style: { label: "data(label)", "font-size": 13, "text-valign": "bottom",
      "text-margin-y": 5, color: "#1d2330", "text-background-color": "#ffffff",
      "text-background-opacity": 0.9, "text-background-padding": 2, "text-wrap": "ellipsis",
      "text-max-width": 170, "background-color": "#9aa3b1", width: 24, height: 24 } },
    { selector: "node.adapter", style: { "background-color": "#1a5fb4", shape: "round-rectangle", width: 36 } },
    { selector: "node.focus", style: { "background-color": "#e66100", "border-width": 3, "border-color": "#102a43",
      "font-weight": "bold" } },
    { selector: "node.run", style: { "background-color": "#26a269", shape: "diamond" } },
    { selector: "node.manifest", style: { "background-color": "#9141ac", shape: "barrel" } },
    { selector: "node.contract", style: { "background-color": "#c64600", shape: "tag" } },
    { selector: "node.base", style: { "background-color": "#5b6474", shape: "hexagon" } },
    { selector: "node.kbd", style: { "border-width": 5, "border-color": "#f0a400", "overlay-color": "#f0a400",
      "overlay-opacity": 0.25, "overlay-padding": 8 } },
    { selector: "edge", style: { width: 1.5, "line-color": "#b6bdc8", "target-arrow-color": "#b6bdc8",
      "target-arrow-shape": "triangle", "curve-style": "bezier", label: "data(label)", "font-size": 11,
      // Level, not along the edge: a vertical edge's label stood as tall as its words are
      // long and ran into the nodes at both ends.
      color: "#3d4554", "text-rotation": "none", "text-background-color": "#fbfcfd",
      "text-background-opacity": 0.9, "text-background-padding": 1 } }
  ];

  function showDetails(panel, node) {
    var d = node.data();
    panel.textContent = "";
    var h = document.createElement("h3");
    h.textContent = d.label + " (" + d.kind + ")";
    panel.appendChild(h);
    if (d.href) {
      var p = document.createElement("p"), a = document.createElement("a");
      a.href = d.href;
      a.textContent = "Open " + d.label;
      p.appendChild(a);
      panel.appendChild(p);
    }
    var dl = document.createElement("dl");
    Object.keys(d.details || {}).forEach(function (key) {
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      var value = d.details[key];
      dt.textContent = key.replace(/_/g, " ");
      dd.textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
    panel.appendChild(dl);
  }

  // Arrow keys move to the nearest node that way (mostly along the arrow, a little across).
  var DIRECTIONS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] };

  function nearest(cy, from, way) {
    var here = from.position(), best = null, bestScore = Infinity;
    cy.nodes().forEach(function (node) {
      if (node === from) return;
      var p = node.position(), dx = p.x - here.x, dy = p.y - here.y;
      var along = dx * way[0] + dy * way[1], across = Math.abs(dx * way[1] + dy * way[0]);
      if (along <= 0) return;
      var score = along + 2 * across;
      if (score < bestScore) { bestScore = score; best = node; }
    });
    return best;
  }

  function keyboard(cy, box, panel) {
    var announce = document.getElementById(box.dataset.announce);
    var current = null;

    function select(node) {
      if (current) current.removeClass("kbd");
      current = node;
      node.addClass("kbd");
      var extent = cy.extent(), p = node.position();
      if (p.x < extent.x1 || p.x > extent.x2 || p.y < extent.y1 || p.y > extent.y2) cy.center(node);
      var d = node.data();
      if (announce) announce.textContent = d.label + ", " + d.kind + (d.href ? ": Enter opens it" : ": Enter shows its hashes");
      registry.keyboard[box.id] = d.id;
    }

    box.addEventListener("focus", function () {
      if (!current) select(cy.nodes(".focus").first().length ? cy.nodes(".focus").first() : cy.nodes().first());
    });
    box.addEventListener("keydown", function (event) {
      if (!current) return;
      var way = DIRECTIONS[event.key];
      if (way) {
        var next = nearest(cy, current, way);
        if (next) select(next);
        event.preventDefault();
      } else if (event.key === "Home") {
        select(cy.nodes(".focus").first());
        event.preventDefault();
      } else if (event.key === "Enter" || event.key === " ") {
        if (current.data("href")) window.location.assign(current.data("href"));
        else if (panel) showDetails(panel, current);
        event.preventDefault();
      } else if (event.key === "+" || event.key === "-") {
        cy.zoom({ level: cy.zoom() * (event.key === "+" ? 1.25 : 0.8), renderedPosition: current.renderedPosition() });
        event.preventDefault();
      }
    });
  }

  function drawGraph(box) {
    if (typeof cytoscape === "undefined" || box.dataset.drawn) return;
    box.dataset.drawn = "yes";
    var spec = data(box.dataset.graph);
    if (!spec) return;
    var cy = cytoscape({
      container: box, elements: { nodes: spec.nodes, edges: spec.edges }, style: graphStyle,
      minZoom: 0.3, maxZoom: 2.5,
      // The server places every node: generations left to right, one row per kind.
      layout: { name: "preset", fit: true, padding: 30 }
    });
    if (cy.zoom() < READABLE) {  // too long to fit legibly: readable size, this version in view
      cy.zoom(READABLE);
      cy.center(cy.nodes(".focus").first());
      // ... across, that is; up and down, every row stays in view (the rows are few).
      var rows = cy.elements().boundingBox();
      cy.pan({ x: cy.pan().x, y: (cy.height() - (rows.y1 + rows.y2) * cy.zoom()) / 2 });
    }
    var panel = document.getElementById("graph-details");
    cy.on("tap", "node", function (event) {
      var node = event.target;
      if (node.data("href")) { window.location.assign(node.data("href")); return; }
      if (panel) showDetails(panel, node);
    });
    keyboard(cy, box, panel);
    registry.graphs[box.id] = cy;
  }

  function drawAll(root) {
    (root || document).querySelectorAll("canvas[data-chart]").forEach(drawChart);
    (root || document).querySelectorAll("[data-graph]").forEach(drawGraph);
  }

  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  // Fragments htmx swaps in (a dry run's result) bring their own charts. The event fires
  // on the element that made the request, not always the one swapped, so look everywhere.
  document.addEventListener("htmx:afterSettle", function () { drawAll(document); });
})();
