import ts from 'typescript';

/**
 * Every name each entry point exports, types included, as the compiler sees it (one program for
 * all of them, without the @types packages: only the names matter), sorted.
 */
export function moduleExports(files: readonly string[]): (file: string) => string[] {
  const program = ts.createProgram([...files], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  return (file) =>
    checker
      .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!)
      .map((s) => s.name)
      .sort();
}
