// KernelIndex's GraphiQL. Everything this page loads comes from the server that serves it
// (kernelindex/web/graphiql.py): no CDN, so it works offline and under a strict Content-Security-Policy,
// which is also why this is a file and not an inline script.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("graphiql-config").textContent);
  var saved = null;
  try {
    saved = window.localStorage.getItem("graphiql:tabState");
  } catch (e) {
    // Storage refused (a privacy setting): every visit is a first visit.
  }
  var props = {
    fetcher: GraphiQL.createFetcher({ url: config.endpoint }),
    defaultQuery: config.query, // a new tab's text
    defaultEditorToolsVisibility: "variables",
    inputValueDeprecation: true,
    isHeadersEditorEnabled: true,
    // An Authorization header carries a write token: never written to localStorage.
    shouldPersistHeaders: false,
  };
  if (saved === null) {
    // A first visit opens on the saved example with its variables. GraphiQL 3 takes the first tab's
    // variables only from the `variables` prop, and a later visit gets neither, so that the user's own
    // tabs (kept by GraphiQL in this browser's localStorage) come back instead.
    props.query = config.query;
    props.variables = config.variables;
  }
  ReactDOM.createRoot(document.getElementById("graphiql")).render(React.createElement(GraphiQL, props));
})();
