/* HCP console: draws the charts (Chart.js) and the lineage graph (Cytoscape.js) from the
   JSON the server renders with them (a chart's in its data-chart attribute, the graph's in
   a <script type="application/json"> block). No inline script anywhere: the page's
   Content-Security-Policy allows scripts only from this server. */
(function () {
  "use strict";
  var registry = (window.hcpConsole = window.hcpConsole || { charts: {}, graphs: {} });
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

  var graphStyle = [
    { selector: "node", style: { label: "data(label)", "font-size": 11, "text-valign": "bottom",
      "text-margin-y": 4, "background-color": "#9aa3b1", width: 22, height: 22 } },
    { selector: "node.adapter", style: { "background-color": "#1a5fb4", shape: "round-rectangle", width: 34 } },
    { selector: "node.focus", style: { "background-color": "#e66100", "border-width": 3, "border-color": "#102a43" } },
    { selector: "node.run", style: { "background-color": "#26a269", shape: "diamond" } },
    { selector: "node.manifest", style: { "background-color": "#9141ac", shape: "barrel" } },
    { selector: "node.contract", style: { "background-color": "#c64600", shape: "tag" } },
    { selector: "node.base", style: { "background-color": "#5b6474", shape: "hexagon" } },
    { selector: "edge", style: { width: 1.5, "line-color": "#b6bdc8", "target-arrow-color": "#b6bdc8",
      "target-arrow-shape": "triangle", "curve-style": "bezier", label: "data(label)", "font-size": 9,
      color: "#5b6474", "text-rotation": "autorotate" } }
  ];

  function showDetails(panel, node) {
    var d = node.data();
    panel.textContent = "";
    var h = document.createElement("h3");
    h.textContent = d.label + " (" + d.kind + ")";
    panel.appendChild(h);
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

  function drawGraph(box) {
    if (typeof cytoscape === "undefined" || box.dataset.drawn) return;
    box.dataset.drawn = "yes";
    var spec = data(box.dataset.graph);
    if (!spec) return;
    var cy = cytoscape({
      container: box, elements: { nodes: spec.nodes, edges: spec.edges }, style: graphStyle,
      // The server places every node: generations left to right, one row per kind.
      layout: { name: "preset", fit: true, padding: 30 }
    });
    var panel = document.getElementById("graph-details");
    cy.on("tap", "node", function (event) {
      var node = event.target;
      if (node.data("href")) { window.location.assign(node.data("href")); return; }
      if (panel) showDetails(panel, node);
    });
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
