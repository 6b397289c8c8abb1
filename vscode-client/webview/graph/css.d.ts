// esbuild bundles the view's stylesheet beside the script (dist/graph-view.css).
declare module '*.css';
