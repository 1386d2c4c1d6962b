(function () {
  "use strict";
  var table = document.getElementById("items");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var sortedBy = -1;
  var direction = 1;

  function value(row, index, numeric) {
    var cell = row.cells[index];
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
    if (!numeric) { return raw.toLowerCase(); }
    return raw === "" ? null : parseFloat(raw);
  }

  function sortBy(index) {
    var numeric = heads[index].getAttribute("data-type") === "num";
    direction = sortedBy === index ? -direction : (numeric ? -1 : 1);
    sortedBy = index;
    var keyed = rows.map(function (row, n) { return [value(row, index, numeric), n, row]; });
    keyed.sort(function (a, b) {
      var x = a[0], y = b[0];
      if (x === y) { return a[1] - b[1]; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      return (x < y ? -1 : 1) * direction;
    });
    rows = keyed.map(function (k) { return k[2]; });
    var fragment = document.createDocumentFragment();
    rows.forEach(function (row) { fragment.appendChild(row); });
    body.appendChild(fragment);
    heads.forEach(function (th, i) {
      if (i === index) { th.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }

  heads.forEach(function (th, i) {
    th.addEventListener("click", function () { sortBy(i); });
  });

  var text = document.getElementById("filter-text");
  var fate = document.getElementById("filter-fate");
  var reason = document.getElementById("filter-reason");
  var shown = document.getElementById("shown");

  var texts = new Map(rows.map(function (row) {
    return [row, row.textContent.toLowerCase()];
  }));

  function filter() {
    var needle = text.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var ok = (!needle || texts.get(row).indexOf(needle) >= 0) &&
        (fate.value === "all" || row.getAttribute("data-fate") === fate.value) &&
        (reason.value === "all" || row.getAttribute("data-reason") === reason.value);
      if (row.hidden === ok) { row.hidden = !ok; }
      if (ok) { count += 1; }
    });
    shown.textContent = count + " of " + rows.length + " rows shown";
  }

  text.addEventListener("input", filter);
  fate.addEventListener("change", filter);
  reason.addEventListener("change", filter);
  filter();
})();
