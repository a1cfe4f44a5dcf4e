// Filled by its own issue; the package exists so the workspace and its exports map are in place.
export const PACKAGE = '@sluice/express';
