"""tokend's own tag queries: which nodes define a symbol (`@def`) and which refer to one (`@ref`),
per language, for the grammars of the official tree-sitter wheels.

Definitions are the names of functions, methods, classes, types, modules and (Python)
module-level assignments; references are calls, member accesses that are called, type names
and constructors. A `@ref` capture at the same place as a `@def` is the definition's own name
and is dropped by the parser. `@import` captures what a file imports, as written (a Python
module, a JavaScript/TypeScript specifier, a Go import path): core.repomap.imports resolves it to
files. Bump QUERIES_VERSION whenever a query or what a file's tags hold changes: cached tags
are keyed on it (3, 4: the words of the file's text, core.repomap.tags.text_words; 5: each
compound identifier whole too, every word by its 32-bit id; 6: 384 words a file, not 256).
"""

from __future__ import annotations

QUERIES_VERSION = 6

PYTHON = """
(class_definition name: (identifier) @def)
(function_definition name: (identifier) @def)
(module (expression_statement (assignment left: (identifier) @def)))
(call function: (identifier) @ref)
(call function: (attribute attribute: (identifier) @ref))
(class_definition superclasses: (argument_list (identifier) @ref))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @ref)))
(decorator (identifier) @ref)
(decorator (attribute attribute: (identifier) @ref))
(type (identifier) @ref)
(import_from_statement name: (dotted_name (identifier) @ref))
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @ref)))
(import_from_statement) @import
(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
"""

JAVASCRIPT = """
(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(class_declaration name: (identifier) @def)
(method_definition name: (property_identifier) @def)
(variable_declarator name: (identifier) @def value: [(arrow_function) (function_expression) (class)])
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
(class_heritage (identifier) @ref)
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (import) arguments: (arguments (string (string_fragment) @import)))
"""

TYPESCRIPT = """
(function_declaration name: (identifier) @def)
(generator_function_declaration name: (identifier) @def)
(class_declaration name: (type_identifier) @def)
(abstract_class_declaration name: (type_identifier) @def)
(interface_declaration name: (type_identifier) @def)
(type_alias_declaration name: (type_identifier) @def)
(enum_declaration name: (identifier) @def)
(method_definition name: (property_identifier) @def)
(method_signature name: (property_identifier) @def)
(abstract_method_signature name: (property_identifier) @def)
(function_signature name: (identifier) @def)
(module name: (identifier) @def)
(variable_declarator name: (identifier) @def value: [(arrow_function) (function_expression) (class)])
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
(type_identifier) @ref
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (import) arguments: (arguments (string (string_fragment) @import)))
"""

GO = """
(function_declaration name: (identifier) @def)
(method_declaration name: (field_identifier) @def)
(type_spec name: (type_identifier) @def)
(method_elem name: (field_identifier) @def)
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression field: (field_identifier) @ref))
(type_identifier) @ref
(import_spec path: (_) @import)
"""

RUST = """
(function_item name: (identifier) @def)
(function_signature_item name: (identifier) @def)
(struct_item name: (type_identifier) @def)
(enum_item name: (type_identifier) @def)
(union_item name: (type_identifier) @def)
(trait_item name: (type_identifier) @def)
(type_item name: (type_identifier) @def)
(mod_item name: (identifier) @def)
(macro_definition name: (identifier) @def)
(const_item name: (identifier) @def)
(static_item name: (identifier) @def)
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (scoped_identifier name: (identifier) @ref))
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
"""

JAVA = """
(class_declaration name: (identifier) @def)
(interface_declaration name: (identifier) @def)
(enum_declaration name: (identifier) @def)
(record_declaration name: (identifier) @def)
(annotation_type_declaration name: (identifier) @def)
(method_declaration name: (identifier) @def)
(constructor_declaration name: (identifier) @def)
(method_invocation name: (identifier) @ref)
(object_creation_expression type: (type_identifier) @ref)
(type_identifier) @ref
"""

_C_COMMON = """
(function_definition declarator: (function_declarator declarator: (identifier) @def))
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @def)))
(declaration declarator: (function_declarator declarator: (identifier) @def))
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @def)))
(struct_specifier name: (type_identifier) @def body: (_))
(union_specifier name: (type_identifier) @def body: (_))
(enum_specifier name: (type_identifier) @def body: (_))
(type_definition declarator: (type_identifier) @def)
(preproc_function_def name: (identifier) @def)
(preproc_def name: (identifier) @def)
(call_expression function: (identifier) @ref)
(type_identifier) @ref
"""

C = (
    _C_COMMON
    + """
(call_expression function: (field_expression field: (field_identifier) @ref))
"""
)

CPP = (
    _C_COMMON
    + """
(class_specifier name: (type_identifier) @def body: (_))
(namespace_definition name: (namespace_identifier) @def)
(function_definition declarator: (function_declarator declarator: (field_identifier) @def))
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (identifier) @def)))
(field_declaration declarator: (function_declarator declarator: (field_identifier) @def))
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (qualified_identifier name: (identifier) @ref))
"""
)

RUBY = """
(method name: (_) @def)
(singleton_method name: (_) @def)
(class name: (constant) @def)
(class name: (scope_resolution name: (constant) @def))
(module name: (constant) @def)
(module name: (scope_resolution name: (constant) @def))
(call method: (identifier) @ref)
(constant) @ref
"""

QUERIES: dict[str, str] = {
    "python": PYTHON,
    "javascript": JAVASCRIPT,
    "typescript": TYPESCRIPT,
    "tsx": TYPESCRIPT,
    "go": GO,
    "rust": RUST,
    "java": JAVA,
    "c": C,
    "cpp": CPP,
    "ruby": RUBY,
}
