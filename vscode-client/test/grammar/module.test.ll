; SYNTAX TEST "source.llvm" "the LLVM IR RelayLens shows"
define void @tvmgen_default_fused_add(ptr noalias %0, ptr %1) !dbg !4 {
; <------ storage.type.function.llvm
;           ^^^^^^^^^^^^^^^^^^^^^^^^^ entity.name.function.llvm
;                                     ^^^ storage.type.llvm
;                                         ^^^^^^^ keyword.other.llvm
;                                                 ^^ variable.other.register.llvm
;                                                             ^^^^ variable.other.metadata.llvm
;                                                                  ^^ variable.other.metadata.llvm
entry:
; <------ entity.name.label.llvm
  %2 = fadd <8 x float> %a, %b, !dbg !9
;      ^^^^ keyword.other.instruction.llvm
;            ^ constant.numeric.llvm
;                ^^^^^ storage.type.llvm
  ret void ; done
; ^^^ keyword.other.instruction.llvm
;          ^^^^^^ comment.line.semicolon.llvm
!9 = !DILocation(line: 5, column: 9, scope: !4)
;    ^^^^^^^^^^^ support.type.metadata-node.llvm
;                ^^^^ entity.other.attribute-name.metadata-field.llvm
@s = private constant [3 x i8] c"ab\00"
;                              ^^^^^^^^ string.quoted.double.llvm
;                                  ^^^ constant.character.escape.llvm
;                          ^^ storage.type.llvm
